"""Checks of configuration values (one-line errors naming the field), parameter-name
renames and the exceptions a run or a sweep ends with."""

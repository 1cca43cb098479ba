"""What two scenario families share: the network settings (graph, links, radio), per-run
seeds and the Fashion-MNIST evaluation subsets."""

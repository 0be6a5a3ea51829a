"""Table reads: scan planning (snapshot → manifests → live files → splits, with pruning) and
reading splits into Arrow."""

"""Fine-tuning's data and yardsticks: the topic task built from the embedded Wikipedia summaries, its
baselines, frozen-feature probes of every layer, and the layer-probe tasks ("which layer knows what")."""

"""Pure drawing: results of ``bertdemo.explore`` and run snapshots in, plotly figures / HTML / images out."""

"""Analysis of colorsim run directories."""

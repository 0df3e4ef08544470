"""The detector every method shares: XGBoost built the same way for each, fitted
on a method's training rows (once per identical rows, in a process or across
Dask workers), and its scores."""

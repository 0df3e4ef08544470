"""The methods compared: each one's sampler (SMOTE family, undersampling,
the GAN's rows) before an XGBoost detector, the neighbour cleaning, and fits
spread across Dask workers."""

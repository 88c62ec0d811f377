"""tfdist: convert TensorFlow training scripts to distributed training."""
__version__ = "0.1.0"

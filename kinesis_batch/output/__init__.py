"""Output: staging, atomic publish and commit records of batches."""

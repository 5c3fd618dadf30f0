"""The kinesis-batch page in the Airflow UI: an Airflow plugin with a FastAPI app (page + JSON)."""

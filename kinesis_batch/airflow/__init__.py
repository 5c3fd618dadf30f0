"""Airflow glue (needs the airflow extra): the hook for clients and the task helpers the DAGs call.
The core library never imports this package."""

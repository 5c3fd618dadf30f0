"""Clients from an Airflow AWS connection: the provider's AwsBaseHook gives the session, and the
connection's extras give endpoints (``endpoint_url``, or ``service_config.<service>.endpoint_url``
for a local Kinesis, DynamoDB and S3 on different ports)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

from kinesis_batch.aws import (
    SERVICES,
    S3Settings,
    aws_env,
    dynamodb_client,
    emr_serverless_client,
    glue_client,
    kinesis_client,
    s3_settings,
    sts_endpoint,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient


class KinesisBatchHook(AwsBaseHook):
    """Thin: clients are still built by kinesis_batch.aws, from this connection's session."""

    def __init__(self, aws_conn_id: str | None = "aws_default") -> None:
        super().__init__(aws_conn_id=aws_conn_id, client_type="kinesis")

    def connection_fingerprint(self) -> str:
        """Changes when the connection does (its URI holds login, secret, host and extras)."""
        if self.aws_conn_id is None:
            return ""
        return hashlib.sha256(self.get_connection(self.aws_conn_id).get_uri().encode()).hexdigest()

    def kinesis(self) -> KinesisClient:
        return kinesis_client(self.get_session(), endpoint_url=self.conn_config.get_service_endpoint_url("kinesis"))

    def dynamodb(self) -> DynamoDBClient:
        return dynamodb_client(self.get_session(), endpoint_url=self.conn_config.get_service_endpoint_url("dynamodb"))

    def glue(self) -> Any:
        """Glue, for the Schema Registry (``service_config.glue.endpoint_url`` for a local one)."""
        return glue_client(self.get_session(), endpoint_url=self.conn_config.get_service_endpoint_url("glue"))

    def emr_serverless(self) -> Any:
        """EMR Serverless, for a read step run as a job run (``service_config.emr-serverless.endpoint_url``)."""
        endpoint = self.conn_config.get_service_endpoint_url("emr-serverless")
        return emr_serverless_client(self.get_session(), endpoint_url=endpoint)

    def s3(self) -> S3Settings:
        """S3 for the table sinks (pyarrow, deltalake, pyiceberg): this connection's session and
        its S3 endpoint, which those libraries would not find on their own."""
        return s3_settings(self.get_session(), endpoint_url=self.conn_config.get_service_endpoint_url("s3"))

    def sts_endpoint(self) -> str:
        """Where a stream's role is assumed (``service_config.sts.endpoint_url``, else the environment's)."""
        return sts_endpoint(self.get_session().region_name, self.conn_config.get_service_endpoint_url("sts"))

    def aws_env(self) -> dict[str, str]:
        """This connection as the standard AWS environment, for a process of our own (spark-submit)."""
        endpoints = {service: self.conn_config.get_service_endpoint_url(service) for service in SERVICES}
        return aws_env(self.get_session(), endpoints, region=self.conn_region_name)

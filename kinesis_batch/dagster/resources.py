"""The resources a stream's definitions use: AWS clients and Spark.

AWS: dagster-aws has no Kinesis or DynamoDB resource, only the fields every boto3 resource of
its has (region, profile, credentials, endpoint). :class:`AwsClients` takes those fields and
builds the clients in kinesis_batch.aws, the one place clients are built. A field left None
falls back to the standard AWS environment (``AWS_ENDPOINT_URL_KINESIS`` and so on, which
botocore reads itself); ``max_attempts``, ``use_ssl`` and ``verify`` are not used: the
library keeps its own retry policy (the shard reader must see throttling).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import boto3
import dagster as dg
from dagster_aws.utils import ResourceWithBoto3Configuration
from pydantic import Field

from kinesis_batch import defaults
from kinesis_batch.aws import (
    SERVICES,
    S3Settings,
    aws_env,
    dynamodb_client,
    glue_client,
    kinesis_client,
    new_session,
    s3_settings,
)
from kinesis_batch.spark.cluster import SparkCluster

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient

    from kinesis_batch.spark.engine import Engine


class AwsClients(ResourceWithBoto3Configuration):
    """Kinesis, DynamoDB and Glue clients, and the S3 settings of the table sinks, from one set
    of AWS settings (None: the standard AWS environment)."""

    def session(self) -> boto3.Session:
        return new_session(
            region_name=self.region_name,
            profile_name=self.profile_name,
            aws_access_key_id=self.aws_access_key_id,
            aws_secret_access_key=self.aws_secret_access_key,
            aws_session_token=self.aws_session_token,
        )

    def kinesis(self) -> KinesisClient:
        return kinesis_client(self.session(), endpoint_url=self.endpoint_url)

    def dynamodb(self) -> DynamoDBClient:
        return dynamodb_client(self.session(), endpoint_url=self.endpoint_url)

    def glue(self) -> Any:
        return glue_client(self.session(), endpoint_url=self.endpoint_url)

    def s3(self) -> S3Settings:
        return s3_settings(self.session(), endpoint_url=self.endpoint_url)

    def aws_env(self) -> dict[str, str]:
        """These settings as the standard AWS environment, for the spark-submit of a read step."""
        return aws_env(self.session(), {service: self.endpoint_url for service in SERVICES}, region=self.region_name)


class SparkResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Spark for the read step, one of two ways, as on the Airflow side:

    - a Spark session in the step's process: on ``master`` (``local[*]``, ``spark://host:7077``,
      ``yarn``...), started on first use (a run with nothing to read never starts a JVM), or a
      Spark Connect server's (``remote``, or ``SPARK_REMOTE``);
    - ``submit``: the read step spark-submitted to ``master`` in client mode, the package
      shipped as a zip (kinesis_batch.spark.cluster). The step's process keeps the run's other
      steps and renews the leases while the submit reads; a lost lease kills the submit.
    """

    master: str = Field(
        default=defaults.SPARK_MASTER, description="Spark master: of the context, or of the spark-submit"
    )
    submit: bool = Field(
        default=False, description="spark-submit the read step to master instead of reading in the step's process"
    )
    remote: str = Field(
        default="",
        description="a Spark Connect server to read on, sc://HOST:PORT (default: $SPARK_REMOTE, else master)",
    )
    spark_submit: str = Field(default="", description="the spark-submit to run (default: the installed pyspark's)")
    conf: dict[str, str] = Field(default={}, description="Spark settings of the spark-submit (its --conf)")

    def context_factory(self) -> Callable[[], Engine]:
        from kinesis_batch.spark.session import default_spark

        return default_spark(self.master, self.remote)

    def cluster(self) -> SparkCluster:
        """Where the read step is spark-submitted to (``submit``)."""
        return SparkCluster(self.master, self.spark_submit, tuple(sorted(self.conf.items())))

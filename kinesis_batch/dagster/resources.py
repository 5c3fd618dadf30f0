"""The resources a stream's definitions use: AWS clients and Spark.

AWS: dagster-aws has no Kinesis or DynamoDB resource, only the fields every boto3 resource of
its has (region, profile, credentials, endpoint). :class:`AwsClients` takes those fields and
builds the clients in kinesis_batch.aws, the one place clients are built. A field left None
falls back to the standard AWS environment (``AWS_ENDPOINT_URL_KINESIS`` and so on, which
botocore reads itself); ``max_attempts``, ``use_ssl`` and ``verify`` are not used: the
library keeps its own retry policy (the shard reader must see throttling).
"""

from __future__ import annotations

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
    emr_serverless_client,
    glue_client,
    kinesis_client,
    new_session,
    s3_settings,
    sts_endpoint,
)
from kinesis_batch.serverless.settings import TIMEOUT_MINUTES, ServerlessSettings
from kinesis_batch.spark.cluster import SparkCluster

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient


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

    def emr_serverless(self) -> Any:
        return emr_serverless_client(self.session(), endpoint_url=self.endpoint_url)

    def s3(self) -> S3Settings:
        return s3_settings(self.session(), endpoint_url=self.endpoint_url)

    def sts_endpoint(self) -> str:
        """Where a stream's role is assumed: ``endpoint_url`` when set, else the environment's STS."""
        return sts_endpoint(self.session().region_name, self.endpoint_url)

    def aws_env(self) -> dict[str, str]:
        """These settings as the standard AWS environment, for the spark-submit of a read step."""
        return aws_env(self.session(), {service: self.endpoint_url for service in SERVICES}, region=self.region_name)


class SparkResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Spark for the read step, one of three ways, as on the Airflow side:

    - a Spark session in the step's process: on ``master`` (``local[*]``, ``spark://host:7077``,
      ``yarn``...), started on first use (a run with nothing to read never starts a JVM), or a
      Spark Connect server's (``remote``, or ``SPARK_REMOTE``);
    - ``submit``: the read step spark-submitted to ``master`` in client mode, the package
      shipped as a zip (kinesis_batch.spark.cluster). The step's process keeps the run's other
      steps and renews the leases while the submit reads; a lost lease kills the submit;
    - ``emr_serverless_application`` (with ``execution_role`` and ``environment``): the read
      step as an EMR Serverless job run (kinesis_batch.serverless), the leases renewed by the
      step's process while it runs, the job run cancelled when one is lost or the run stops.
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
    emr_serverless_application: str = Field(
        default="", description="an EMR Serverless Spark application: the read step runs as a job run on it"
    )
    execution_role: str = Field(default="", description="the IAM role ARN the job run runs as")
    environment: str = Field(default="", description="the s3://… archive `kinesis-batch package` wrote")
    emr_serverless_conf: dict[str, str] = Field(default={}, description="Spark settings of the job run")
    emr_serverless_timeout_minutes: int = Field(
        default=TIMEOUT_MINUTES, description="the job run's timeout: the read's budget, queueing included"
    )

    def job_run(self) -> ServerlessSettings | None:
        """The emr_serverless setting these fields give (None: no application named)."""
        if not self.emr_serverless_application:
            return None
        return ServerlessSettings.of(
            {
                "application_id": self.emr_serverless_application,
                "execution_role_arn": self.execution_role,
                "environment": self.environment,
                "conf": self.emr_serverless_conf,
                "timeout_minutes": self.emr_serverless_timeout_minutes,
            }
        )

    def cluster(self) -> SparkCluster:
        """Where the read step is spark-submitted to (``submit``)."""
        return SparkCluster(self.master, self.spark_submit, tuple(sorted(self.conf.items())))

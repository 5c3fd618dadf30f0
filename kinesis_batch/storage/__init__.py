"""The storage layer every wing stands on: where files are (a local or S3 folder), what a read
step staged there, how it lays its files out, and the commit record a published batch carries.
It knows no sink: the output wing, the Spark tasks, the EMR Serverless step and the planner all
use it, none of them through another."""

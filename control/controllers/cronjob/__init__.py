"""The CronJob controller (upstream pkg/controller/cronjob)."""

"""The kubelet's stats: the Summary API (/stats/summary), /metrics/resource and /metrics, fed by psutil and
Docker's stats API instead of cAdvisor (summary.py and resource_metrics.py are pure; provider.py does the I/O)."""

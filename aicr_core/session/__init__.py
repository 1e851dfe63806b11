"""The Kubernetes session: kubeconfig, credentials, deadlines, requests, watches."""

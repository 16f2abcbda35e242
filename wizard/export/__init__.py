"""Exports of a verified design to the engines operators already run (Kubernetes, Ansible)."""

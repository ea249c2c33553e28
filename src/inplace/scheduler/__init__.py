"""Scheduler: places pods and arbitrates every resize."""

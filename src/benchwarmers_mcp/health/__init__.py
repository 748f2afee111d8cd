"""The bench looks after itself: probes, the auto-retire rules, alerts and the onboarding queue."""

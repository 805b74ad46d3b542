"""Hostile inputs for the security suite: SQL injection payloads wrapped into full
statements, and documents carrying indirect prompt-injection payloads."""

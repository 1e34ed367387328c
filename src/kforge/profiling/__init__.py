"""Profiles for the performance-analysis agent: where a forward call's time goes and how close it is to the roofline."""

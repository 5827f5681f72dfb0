"""agentensemble: orchestrate teams of LLM agents with exact tool semantics and safe human review."""

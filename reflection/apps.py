from django.apps import AppConfig


class ReflectionConfig(AppConfig):
    name = "reflection"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """A fact that stops holding re-evaluates the traits it supported (memories.withdrawals); MCP
        clients can end a session (reflection.mcp)."""
        from memories import withdrawals
        from memories.api.mcp_server import register_tool
        from reflection.engine import on_evidence_withdrawn
        from reflection.mcp import end_session_tool

        withdrawals.listen(on_evidence_withdrawn)
        register_tool(end_session_tool)

from django.apps import AppConfig


class ReflectionConfig(AppConfig):
    name = "reflection"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """A fact that stops holding re-evaluates the traits it supported (memories.withdrawals); MCP
        clients can end a session (reflection.mcp); erasure scrubs the user's cycles."""
        from memories import withdrawals  # AppConfig.ready: the services import models, loaded only now
        from memories.api.mcp_server import register_tool
        from memories.erasure import Store, register_store
        from reflection.mcp import end_session_tool
        from reflection.moments import cycles_erase, on_evidence_withdrawn

        withdrawals.listen(on_evidence_withdrawn)
        register_tool(end_session_tool)
        register_store(Store("reflection_cycles", ("reflection.ReflectionCycle",), "scrub",
                             "error texts and session ids emptied; counts kept"), step=cycles_erase)

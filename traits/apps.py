from django.apps import AppConfig


class TraitsConfig(AppConfig):
    name = "traits"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Traits are memories' derived store: erasure erases them through this app's step, and
        check_consistency checks their evidence through this app's check."""
        from memories.consistency import register_check  # AppConfig.ready: the services import models, loaded only now
        from memories.erasure import Store, register_store
        from memories.trait_lines import register_trait_line_reader, register_trait_stage_reader  # (the same reason)
        from traits.selectors import active_trait_lines, trait_stages_of  # (the same reason)
        from traits.services import ORPHAN_EVIDENCE_SQL, evidence_delete_orphans, traits_erase

        register_store(
            Store("traits", ("traits.Trait",), "delete", "traits are trait memories (with their memory)"),
            Store("trait_evidence", ("traits.TraitEvidence",), "delete", "links to the user's memories"),
            step=traits_erase, before_memories=True)
        register_check("orphan_evidence", ORPHAN_EVIDENCE_SQL, evidence_delete_orphans)
        register_trait_line_reader(active_trait_lines)  # the trait lines a context block shows
        register_trait_stage_reader(trait_stages_of)  # the stages the search's scorer boosts by

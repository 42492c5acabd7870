from django.contrib.admin.apps import AdminConfig


class MemoryAdminConfig(AdminConfig):
    default_site = "memory_project.admin_site.MemoryAdminSite"

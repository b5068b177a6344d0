from django.apps import AppConfig


class DevicesConfig(AppConfig):
    name = "devices"
    verbose_name = "Devices"

    def ready(self) -> None:
        from devices.models import DeviceClass
        from portal.inventory import register_device_classes

        # Quotas name device classes; the tenancy domain asks through this (it may not import
        # devices).
        register_device_classes(DeviceClass.objects.all)

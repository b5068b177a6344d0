"""Raw samples and rollups re-created narrow: keyed by (device, time) with no surrogate id,
4-byte floats, widest columns first, time indexed with BRIN on PostgreSQL.

Django cannot turn an integer primary key into a composite one in place, so both tables are
dropped and created again: telemetry history recorded before this migration is lost (the
latest-value rows, ``DeviceTelemetry``, are kept; a new history starts with the next cycle).
"""

import django.db.models.deletion
from django.db import migrations, models

import devices.models.telemetry


class Migration(migrations.Migration):
    dependencies = [
        ("devices", "0009_telemetry"),
    ]

    operations = [
        migrations.DeleteModel(name="DeviceSample"),
        migrations.DeleteModel(name="DeviceRollup"),
        migrations.CreateModel(
            name="DeviceSample",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "device_id",
                        "sampled_at",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                (
                    "device",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="devices.devicetelemetry",
                    ),
                ),
                ("sampled_at", models.DateTimeField()),
                ("power_w", devices.models.telemetry.RealField(blank=True, null=True)),
                ("fb_used_mib", models.IntegerField(blank=True, null=True)),
                ("gpu_util", models.SmallIntegerField(blank=True, null=True)),
                ("mem_copy_util", models.SmallIntegerField(blank=True, null=True)),
                ("temperature_c", models.SmallIntegerField(blank=True, null=True)),
            ],
            options={
                "indexes": [
                    devices.models.telemetry.TimeIndex(
                        fields=["sampled_at"], name="devicesample_time"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="DeviceRollup",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "device_id",
                        "resolution",
                        "bucket_start",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                (
                    "device",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="devices.devicetelemetry",
                    ),
                ),
                ("bucket_start", models.DateTimeField()),
                ("gpu_util_avg", devices.models.telemetry.RealField(blank=True, null=True)),
                ("mem_copy_util_avg", devices.models.telemetry.RealField(blank=True, null=True)),
                ("fb_used_mib_avg", devices.models.telemetry.RealField(blank=True, null=True)),
                ("fb_used_mib_max", models.IntegerField(blank=True, null=True)),
                ("power_w_avg", devices.models.telemetry.RealField(blank=True, null=True)),
                ("samples", models.PositiveSmallIntegerField()),
                ("gpu_util_max", models.SmallIntegerField(blank=True, null=True)),
                ("temperature_c_max", models.SmallIntegerField(blank=True, null=True)),
                (
                    "resolution",
                    models.CharField(
                        choices=[("5m", "5 minutes"), ("1h", "1 hour")], max_length=2
                    ),
                ),
            ],
            options={
                "indexes": [
                    devices.models.telemetry.TimeIndex(
                        fields=["bucket_start"], name="devicerollup_time"
                    )
                ],
            },
        ),
    ]

"""The fleet pipeline: KIP-35 negotiation and feature availability across many clusters.

It runs on Apache Spark (PySpark, the optional extra ``kclient[spark]``) and
applies exactly the rules of :mod:`kclient.negotiation` to snapshot records
(the snapshot-record contract of :mod:`kclient.contracts`) with DataFrame
operations.  Nothing here is imported by
``import kclient``, and PySpark itself is imported only when a pipeline runs.

Entry points: :func:`kclient.fleet.pipeline.run_report` (the whole report),
:func:`kclient.fleet.synth.write_fleet` (a synthetic fleet) and
:func:`kclient.fleet.scan.run_scan` (probe clusters from Spark tasks).
"""

from __future__ import annotations

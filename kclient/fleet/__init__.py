"""The fleet pipeline: KIP-35 negotiation and feature availability across many clusters.

Two engines apply exactly the rules of :mod:`kclient.negotiation` to snapshot
records (the snapshot-record contract of :mod:`kclient.contracts`) and write
the same tables: in-process (:mod:`kclient.fleet.local`, for what one machine
holds; pyarrow from the optional extra ``kclient-kafka[fleet]``) and on Apache
Spark (:mod:`kclient.fleet.pipeline`, PySpark from the optional extra
``kclient-kafka[spark]``, which includes the first); :mod:`kclient.fleet.engine`
chooses.  Both
ask the core once per distinct view shape (:mod:`kclient.fleet.judge`).
Nothing here is imported by ``import kclient``, and PySpark itself is imported
only when the Spark engine runs.

Entry points: :func:`kclient.fleet.local.run_local_report` and
:func:`kclient.fleet.pipeline.run_report` (the whole report),
:func:`kclient.fleet.synth.write_fleet` (a synthetic fleet) and
:func:`kclient.fleet.scan.run_local_scan` / :func:`kclient.fleet.scan.run_scan`
(probe clusters, then report).
"""

from __future__ import annotations

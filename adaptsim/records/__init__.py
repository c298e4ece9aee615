"""What a job writes and how it is read back (docs/design.md §6): summary.json (`summary`), a run's per-step records
(`steps`), atomic writes and compressed records (`files`), per-job log files (`logs`)."""

from adaptsim.records.files import (COMPRESSIBLE, SIMULATIONS, XZ, compress_records, follow_umask, read_record,
                                    record_file, write_bytes_atomic, write_json_atomic, written_records)
from adaptsim.records.logs import job_logs, speaking_for
from adaptsim.records.steps import RecordWriter, written_steps
from adaptsim.records.summary import (JOB_KEYS, RUN_FILES, RUN_KEYS, JobSummary, alive, check_resumable,
                                      check_run_dir, job_fields, read_records, read_summary, recorded_process,
                                      this_process)

__all__ = ["COMPRESSIBLE", "JOB_KEYS", "RUN_FILES", "RUN_KEYS", "SIMULATIONS", "XZ", "JobSummary", "RecordWriter",
           "alive", "check_resumable", "check_run_dir", "compress_records", "follow_umask", "job_fields", "job_logs",
           "read_record", "read_records", "read_summary", "record_file", "recorded_process", "speaking_for",
           "this_process", "write_bytes_atomic", "write_json_atomic", "written_records", "written_steps"]

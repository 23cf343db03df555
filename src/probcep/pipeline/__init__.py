"""The pipeline's steps, one module each, named like the `probcep` verb, the `jobs/` file
and the Airflow task that run them; `context` holds what every step of a run shares."""

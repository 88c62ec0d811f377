"""Running converted scripts: ``tfdist run`` (launch under horovodrun, or as
TF_CONFIG workers for tf.distribute) and ``tfdist verify`` (prove the ranks
trained correctly).

Modules (imported on demand; none imports TensorFlow):
  launcher  find horovodrun / write TF_CONFIG per worker, launch with streaming
            output and a hard timeout (process_trees: kill whole process trees)
  probe     start-up module run in every process (python -m tfdist.runtime.probe)
  verify    verify_script() / sweep_script(); re-exports the verify_* parts:
            verify_records (probe records), verify_samples, verify_observe
            (run_and_observe), verify_results (typed Check results),
            verify_checks and verify_sample_checks (the checks),
            verify_report (their text and JSON)
  commands  run_main() / verify_main() and their argparse parsers
"""

"""Running converted scripts: ``tfdist run`` (launch under horovodrun, or as
TF_CONFIG workers for tf.distribute) and ``tfdist verify`` (prove the ranks
trained correctly).

Modules (imported on demand; none imports TensorFlow):
  launcher  find horovodrun / write TF_CONFIG per worker, launch with streaming
            output and a hard timeout
  probe     start-up module run in every process (python -m tfdist.runtime.probe)
  verify    run_and_observe(), check(), verify_script() and the report types
  commands  run_main() / verify_main() and their argparse parsers
"""

"""The offline plan, `python -m plan <stack>`: the planned resources every module reads
(model), the engine that runs the program under Pulumi's mock engine (engine; the outputs it
answers with: outputs), the command line and summary (cli), every Helm release rendered offline
(render, manifests; charts from the cache that charts fills) and the images they pull (images),
the diff with an earlier plan (diff, rendered_diff, diff_report, with replacements,
userdata_diff, knock_on and cost_change), the printed cost section (cost_text), `--detail` and
the exposure summary (review), `--graph` (graph), the runner's IAM policy (deploy_policy, from
the table deploy_actions), the critical path of a first `up` (critical_path), the policy pack's
offline run (policy) and the warnings only a plan can give (warnings)."""

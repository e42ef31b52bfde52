"""The offline plan, `python -m infra.plan <stack>`: the planned resources every module reads
(model), the engine that runs the program under Pulumi's mock engine (engine; the outputs it
answers with: outputs), the command line
and summary (cli), every Helm release rendered offline (render, manifests; charts from the cache
that charts fills) and the images they pull (images), the diff with an earlier plan (diff,
rendered_diff, diff_report, with replacements, userdata_diff and cost_change), `--detail` and
the exposure summary (review), `--graph` (graph), the policy pack's offline run (policy) and
the warnings only a plan can give (warnings)."""

"""The offline plan, `python -m infra.plan <stack>`: the planned resources every module reads
(model), the engine that runs the program under Pulumi's mock engine (engine), the command line
and summary (cli), the diff with an earlier plan (diff), `--detail` and the exposure summary
(review), `--graph` (graph), the policy pack's offline run (policy) and the warnings only a plan
can give (warnings)."""

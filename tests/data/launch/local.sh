#!/bin/sh
# banyan cluster start --launcher local --dry-run: what would run (nothing was).
# The controller, on this host:
/opt/banyan/bin/banyan-controller --profile-dir /home/ada/.banyan/profile_default --ip 198.18.0.254
# 3 engines:
/opt/banyan/bin/banyan-engine --file /home/ada/.banyan/profile_default/security/ipcontroller-engine.json --count 2 --id 0 --log-level warn
/opt/banyan/bin/banyan-engine --file /home/ada/.banyan/profile_default/security/ipcontroller-engine.json --count 1 --id 2 --log-level warn

#!/usr/bin/env bash
# Installs what the Slurm tests need to start a one-node Slurm cluster of
# their own (tests/slow/test_slurm_jobs.py): Debian's slurm-wlm (slurmctld,
# slurmd, sbatch, srun, scontrol; 22.05 on Debian 12) and munge.  Nothing is
# configured or started here: the tests write a slurm.conf into a temporary
# directory and start (and stop) munged, slurmctld and slurmd themselves.
#
# Idempotent and quiet when everything is there.  Needs root (or sudo without
# a password) and Debian/Ubuntu's apt-get; elsewhere it says why and exits 0,
# and the Slurm tests are skipped with that reason.
#   bash scripts/setup_slurm.sh
set -uo pipefail
log() { echo "[setup_slurm] $*" >&2; }
need=()
for tool in slurmctld slurmd sbatch srun scontrol munged; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || need+=("$tool")
done
if [ "${#need[@]}" -eq 0 ]; then
  log "Slurm and munge are installed"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  log "missing ${need[*]} and no apt-get here: install Slurm (slurmctld, slurmd) and munge to run the Slurm tests"
  exit 0
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if sudo -n true 2>/dev/null; then sudo=(sudo -n); else
    log "missing ${need[*]}; installing them needs root: sudo apt-get install slurm-wlm munge"
    exit 0
  fi
fi
log "installing slurm-wlm and munge (missing: ${need[*]})"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >/dev/null 2>&1 || log "apt-get update failed; trying the install anyway"
if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null 2>&1; then
  log "apt-get install slurm-wlm munge failed: the Slurm tests will be skipped"
fi
exit 0

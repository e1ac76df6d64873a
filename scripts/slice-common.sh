# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034  # the caller's variables, read and set here
# What scripts/paper-slice.sh and scripts/rhat-slice.sh share, sourced by
# both: a slice's name, deadline, options and config, bnn from the kit (or
# built), and the throughput table's check. They set slice_script (the
# name their lines begin with) and root (the checkout) before sourcing it,
# and before calling these: out (OUT_DIR), start (the slice's start, date
# +%s), and log (the slice's log file) for say.

# Ends the script with exit 2: a bad argument, before anything runs.
bad() { echo "$slice_script: $*" >&2; exit 2; }

# slice_name_and_deadline NAME MINIMUM: checks NAME (it names the files that
# come back) and sets deadline_s from BNN_SLICE_DEADLINE (default 530, at
# least MINIMUM seconds).
slice_name_and_deadline() {
  [[ "$1" =~ ^[A-Za-z0-9-]+$ ]] || bad "NAME '$1' must be letters, digits and '-' (it names the files that come back)"
  deadline_s="${BNN_SLICE_DEADLINE:-530}"
  [[ "$deadline_s" =~ ^[0-9]+$ && $deadline_s -ge $2 ]] ||
    bad "BNN_SLICE_DEADLINE '$deadline_s' is not a whole number of seconds, at least $2"
}

# slice_options AT_ONCE NOUN OPTION...: refuses the OPTIONs that the slice
# sets itself (--out, --config and --time-limit, also in the short and '='
# forms bnn takes; bnn would take the last one given), and an AT_ONCE other
# than auto where BNN_SLICE_THROUGHPUT chooses the NOUN (what AT_ONCE sets).
slice_options() {
  local at_once="$1" noun="$2" k i
  shift 2
  local options=("$@")
  for ((i = 0; i < ${#options[@]}; ++i)); do
    case "${options[i]}" in
      --time-limit | --time-limit=*) bad "--time-limit is set from BNN_SLICE_DEADLINE: set that instead" ;;
      --out | --out=* | -o*) bad "--out is set from BNN_SLICE_WORK: set that instead" ;;
      --config | --config=* | -c*) bad "--config is set from BNN_SLICE_CONFIG: set that instead" ;;
      "$at_once"=*) k="${options[i]#*=}" ;;
      "$at_once") k="${options[i + 1]:-}" ;;
      *) continue ;;
    esac
    [[ -z "${BNN_SLICE_THROUGHPUT:-}" || "$k" == auto ]] ||
      bad "BNN_SLICE_THROUGHPUT chooses the $noun: drop $at_once $k"
  done
}

# slice_config: sets config from BNN_SLICE_CONFIG (default
# configs/fashion_mnist_paper.yaml), which must be a file.
slice_config() {
  config="${BNN_SLICE_CONFIG:-$root/configs/fashion_mnist_paper.yaml}"
  [[ -f "$config" ]] || bad "no config file $config"
}

# run_stoppable COMMAND...: runs COMMAND, a `timeout ...` (which puts itself
# in a process group of its own, out of reach of a signal to this script's
# group), so that a TERM, INT or HUP to this script reaches it too, and sets
# code to its exit status. Without it, a slice stopped by a scheduler or a
# closed terminal left bnn training on, writing into the records of the
# next call.
run_stoppable() {
  "$@" &
  local child=$!
  trap 'kill -TERM "$child" 2> /dev/null' TERM INT HUP
  wait "$child"
  code=$?
  while kill -0 "$child" 2> /dev/null; do  # wait returned for a trapped signal: the command's own status next
    wait "$child"
    code=$?
  done
  trap - TERM INT HUP
}

# The script's line, on its output and in the log.
say() { echo "$slice_script: $*" | tee -a "$log"; }
elapsed() { echo $(($(date +%s) - start)); }

# slice_bnn: sets bnn, as given (BNN_SLICE_BNN), from the kit, or built (and
# then saved as a kit in OUT_DIR) by scripts/build-pip-torch.sh, within the
# deadline. Exits 1 where there is none.
slice_bnn() {
  bnn="${BNN_SLICE_BNN:-}"
  if [[ -z "$bnn" ]]; then
    local kit="${BNN_SLICE_KIT:-$root/gpu-kit/bnn-kit.tar.gz}"
    local debs="${BNN_SLICE_DEBS:-$root/debs}"
    local build="${BNN_SLICE_BUILD:-$root/build-torch}"
    local build_args=(--build "$build" --no-tests --target bnn)
    [[ -f "$kit" ]] && build_args+=(--from-kit "$kit")
    if [[ -d "$debs" ]]; then
      build_args+=(--debs "$debs")
      compgen -G "$debs/dataset-fashion-mnist_*.deb" > /dev/null && build_args+=(--with-data)
    fi
    say "bnn from scripts/build-pip-torch.sh ${build_args[*]}"
    local limit=$((deadline_s - $(elapsed) - 5))
    ((limit >= 1)) || limit=1
    timeout -k 5 "$limit" env BNN_CUDA_KERNELS="${BNN_CUDA_KERNELS:-ON}" \
      bash "$root/scripts/build-pip-torch.sh" "${build_args[@]}" --save-kit "$out/bnn-kit.tar.gz" >> "$log" 2>&1
    local code=$?
    [[ $code -eq 0 ]] || { say "no bnn: scripts/build-pip-torch.sh exited $code (the log above)"; exit 1; }
    bnn="$build/src/bnn"
    grep -E "^build-pip-torch: (bnn from the kit|not using the kit|built in|kit written)" "$log"
  fi
  [[ -x "$bnn" ]] || { say "$bnn is not an executable bnn"; exit 1; }
}

# slice_throughput DESIGN COMMAND NOUN AT_ONCE: sets throughput to
# (--throughput TABLE) where BNN_SLICE_THROUGHPUT names a table with a row
# bnn COMMAND can choose from: a finished run of DESIGN, or of one member
# alone (columns 1, 2, 3 and 5 as bench/members_per_device.sh writes them;
# src/pipeline/throughput.h). Where it names none such (the check that was
# to measure it ran out of time), it says why not and sets throughput to
# (AT_ONCE 1), one NOUN at a time, to go after the caller's options (bnn
# takes the last): bnn's own default fills the GPU's memory, up to 8 at
# once, all started before any has been timed, and in the minutes a slice
# has, 8 sharing one GPU could leave none finished where one alone
# finishes one or two.
slice_throughput() {
  throughput=()
  [[ -n "${BNN_SLICE_THROUGHPUT:-}" ]] || return 0
  local table="$BNN_SLICE_THROUGHPUT"
  if [[ -f "$table" ]] && awk -F, -v design="$1" '
      NR > 1 && $3 == 0 && $5 + 0 > 0 && $5 != "inf" && ($1 == design || ($1 == "streams" && $2 == 1)) { found = 1 }
      END { exit !found }' < "$table"; then
    table="$(cd "$(dirname "$table")" && pwd)/$(basename "$table")"
    throughput=(--throughput "$table")
    say "$3 at once from $table (bnn $2 --throughput)"
  else
    throughput=("$4" 1)
    say "not using BNN_SLICE_THROUGHPUT=$table: no such file, or no finished $1 run in it; one of the $3 at a" \
      "time ($4 1), since K at once before any is timed could leave none finished"
  fi
}

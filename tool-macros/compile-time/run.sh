#!/usr/bin/env bash
# Compile time of a user's crate with N tools of the weather shape: #[tool]
# against rmcp's #[tool] + #[tool_router], measured side by side in one run.
#
#   tool-macros/compile-time/run.sh [N...]      (default: 100 25)
#
# Generates two crates in a scratch workspace (one target dir, dependencies
# built first), and a third with the same input and output types but no
# tools (the floor both pay: serde and schemars derives of the user's own
# types), then for each N and each crate, median of RUNS (default 5):
#   debug:       non-incremental debug rebuild of the crate (CARGO_INCREMENTAL=0)
#   incremental: incremental debug rebuild after touching its source
#   release:     release rebuild of the crate
# and, with the nightly toolchain when present, the expanded lines per tool.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
scratch="${SCRATCH:-$(mktemp -d /tmp/tool-compile-time.XXXXXX)}"
runs="${RUNS:-5}"
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(100 25)

generate() { # $1 = ours|rmcp, $2 = N
    local kind=$1 n=$2 dir="$scratch/$1_$2"
    mkdir -p "$dir/src"
    if [ "$kind" = types ]; then
        cat > "$dir/Cargo.toml" <<TOML
[package]
name = "${kind}_$n"
version = "0.0.0"
edition = "2024"
[dependencies]
serde = { version = "1", features = ["derive"] }
schemars = "1"
TOML
    elif [ "$kind" = ours ]; then
        cat > "$dir/Cargo.toml" <<TOML
[package]
name = "${kind}_$n"
version = "0.0.0"
edition = "2024"
[dependencies]
tool-core = { path = "$repo/tool-core" }
serde = { version = "1", features = ["derive"] }
schemars = "1"
TOML
    else
        cat > "$dir/Cargo.toml" <<TOML
[package]
name = "${kind}_$n"
version = "0.0.0"
edition = "2024"
[dependencies]
rmcp = { version = "=3.11.0", default-features = false, features = ["server", "macros", "schemars"] }
serde = { version = "1", features = ["derive"] }
schemars = "1"
TOML
    fi
    {
        if [ "$kind" = ours ]; then
            echo 'use tool_core::{tool, ToolError};'
        elif [ "$kind" = rmcp ]; then
            echo 'use rmcp::handler::server::{router::tool::ToolRouter, wrapper::{Json, Parameters}};'
            echo 'use rmcp::{tool, tool_router};'
            echo '/// The server.'
            echo '#[derive(Clone)]'
            echo 'pub struct Server { pub tool_router: ToolRouter<Self> }'
        fi
        for i in $(seq 1 "$n"); do
            cat <<RS
/// Where ($i).
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct WeatherInput$i {
    /// City name or coordinates
    pub location: String,
}
/// The weather ($i).
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Weather$i { pub location: String, pub temperature_celsius: f64, pub conditions: String }
RS
            if [ "$kind" = ours ]; then
                cat <<RS
/// Get the current weather for a location
#[tool(id = "weather-$i", mcp(title = "Weather Lookup", read_only, idempotent))]
pub async fn weather_$i(WeatherInput$i { location }: WeatherInput$i) -> Result<Weather$i, ToolError> {
    Ok(Weather$i { location, temperature_celsius: 21.0, conditions: "sunny".into() })
}
RS
            fi
        done
        if [ "$kind" = ours ]; then
            echo 'pub fn tools() -> Vec<tool_core::Tool> { vec!['
            for i in $(seq 1 "$n"); do echo "    Weather${i}Tool.into(),"; done
            echo '] }'
        elif [ "$kind" = rmcp ]; then
            echo '#[tool_router]'
            echo 'impl Server {'
            for i in $(seq 1 "$n"); do
                cat <<RS
    /// Get the current weather for a location
    #[tool(name = "weather-$i", annotations(title = "Weather Lookup", read_only_hint = true, idempotent_hint = true))]
    pub async fn weather_$i(&self, Parameters(WeatherInput$i { location }): Parameters<WeatherInput$i>) -> Result<Json<Weather$i>, String> {
        Ok(Json(Weather$i { location, temperature_celsius: 21.0, conditions: "sunny".into() }))
    }
RS
            done
            echo '}'
            echo 'pub fn tools() -> ToolRouter<Server> { Server::tool_router() }'
        fi
    } > "$dir/src/lib.rs"
}

members=()
for n in "${counts[@]}"; do
    for kind in ours rmcp types; do generate "$kind" "$n"; members+=("\"${kind}_$n\""); done
done
members_list=$(IFS=,; echo "${members[*]}")
cat > "$scratch/Cargo.toml" <<TOML
[workspace]
resolver = "3"
members = [$members_list]
[profile.release]
debug = false
TOML
cp "$repo/Cargo.lock" "$scratch/Cargo.lock"
cd "$scratch"
export CARGO_TARGET_DIR="$scratch/target"

# Dependencies once, in every target dir and profile the measurements use.
for kind_n in "${members[@]}"; do
    package=${kind_n//\"/}
    CARGO_INCREMENTAL=0 cargo build -q -p "$package"
    CARGO_INCREMENTAL=1 CARGO_TARGET_DIR="$scratch/target-incremental" cargo build -q -p "$package"
    cargo build -q --release -p "$package"
done

seconds() { # a command's wall time
    local start end
    start=$(date +%s.%N)
    "$@" > /dev/null 2>&1
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}
median() { sort -n | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.2f", m }'; }

echo "machine: $(nproc) cores, $(uname -sr), $(rustc --version)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# One measurement of one crate: $1 = mode, $2 = package.
measure() {
    local src="$scratch/$2/src/lib.rs"
    touch "$src"
    # tool-core is a path dependency, so incremental compilation applies to
    # it too: each mode keeps its own target dir, or switching modes would
    # rebuild tool-core inside the measurement.
    case $1 in
        debug) CARGO_INCREMENTAL=0 seconds cargo build -p "$2" ;;
        incremental) CARGO_INCREMENTAL=1 CARGO_TARGET_DIR="$scratch/target-incremental" seconds cargo build -p "$2" ;;
        release) seconds cargo build --release -p "$2" ;;
    esac
}
results="$scratch/results"
rm -rf "$results"; mkdir -p "$results"
for n in "${counts[@]}"; do
    # The two crates alternate within each round, so a change in load
    # affects both alike.
    for _ in $(seq "$runs"); do
        for mode in debug incremental release; do
            for kind in ours rmcp types; do
                measure "$mode" "${kind}_$n" >> "$results/${kind}_${n}_$mode"
            done
        done
    done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| tools | crate | debug rebuild (s) | incremental touch (s) | release rebuild (s) | expanded lines per tool |\n'
printf '|---|---|---|---|---|---|\n'
for n in "${counts[@]}"; do
    for kind in ours rmcp types; do
        package="${kind}_$n"
        debug=$(median < "$results/${package}_debug")
        incremental=$(median < "$results/${package}_incremental")
        release=$(median < "$results/${package}_release")
        expanded="n/a"
        if cargo +nightly --version > /dev/null 2>&1; then
            lines=$(CARGO_TARGET_DIR="$scratch/target-nightly" cargo +nightly rustc -q -p "$package" -- -Zunpretty=expanded 2>/dev/null | wc -l)
            expanded=$(( lines / n ))
        fi
        printf '| %s | %s | %s | %s | %s | %s |\n' "$n" "$kind" "$debug" "$incremental" "$release" "$expanded"
    done
done

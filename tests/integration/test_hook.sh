#!/bin/sh
# mtl_set_hook on examples/hook_demo.c (truth at its top): counts by type
# at exit, and the most frequent stacks that create a type, with a depth
# and a minimum count; run alone (it records itself) and under memtally
# record.  Its hook allocates (backtrace), which must not be reported to it.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
demo=$MEMTALLY_ROOT/build/examples/hook_demo
[ -x "$demo" ] || fail "build/examples/hook_demo is not built"

expect_eq "counts by type" "$(printf '%s\n' 'Token    30' 'Node     10' 'Value    50')" "$("$demo")"
[ -s hook_demo.mtly ] || fail "hook_demo did not record itself"
expect_eq "its trace: the same objects by type" "Value 50 800 Token 30 720 Node 10 640" \
    "$("$MEMTALLY_BIN" types --json hook_demo.mtly | jq -r '[.rows[] | select(.type != "(untagged)") |
        "\(.type) \(.calls) \(.bytes)"] | join(" ")')"
expect_eq "stacks that create a Value, 2 deep" \
    "$(printf '%s\n' '30 make_value <- eval_add' '20 make_value <- eval_mul')" "$("$demo" Value 2)"
expect_eq "the same, 25 times or more" "30 make_value <- eval_add" "$("$demo" Value 2 25)"
expect_eq "stacks that create a Token, 1 deep" "30 parse" "$("$demo" Token 1)"
record rec.mtly "$demo" Value 3 >out.txt || fail "hook_demo under memtally record failed"
expect_eq "under memtally record" \
    "$(printf '%s\n' '30 make_value <- eval_add <- main' '20 make_value <- eval_mul <- main')" "$(cat out.txt)"
expect_eq "stacks --target-type Value of its trace (new_object a wrapper)" "30 20" \
    "$("$MEMTALLY_BIN" stacks --json --target-type Value --depth 2 --wrapper new_object rec.mtly | jq -r '[.rows[].count] | join(" ")')"
echo "ok: hook"

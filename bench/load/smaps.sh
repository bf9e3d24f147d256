#!/usr/bin/env bash
# Where a process's resident pages are (issue #23, session 11): /proc/PID/smaps grouped by
# mapping, Rss in KiB. Usage: smaps.sh PID [LABEL]. Prints two lines:
#   SMAPS LABEL text= rodata= relro= data+bss= libs= heap= arenas= stacks= anon=
#   STATUS LABEL VmHWM VmRSS RssAnon RssFile (from /proc/PID/status)
# text / rodata / relro / data+bss are the binary's own mappings: r-x; r-- without private
# dirty pages (.rodata, .eh_frame, headers); r-- with them (.data.rel.ro and .got once RELRO
# made them read-only: relocated pointers, copied on write); rw- (.data, .bss). libs: every
# other file-backed mapping. heap: `[heap]` (glibc's main arena). arenas: an anonymous rw-
# mapping followed by a no-access one with which it fills 64 MiB (a glibc thread arena).
# stacks: `[stack]` and an anonymous rw- mapping right after a 4 KiB no-access guard page.
# anon: the rest. Read-only: it only reads /proc.
set -euo pipefail
pid=$1
label=${2:-$pid}
exe=$(readlink "/proc/$pid/exe")
awk -v exe="$exe" -v label="$label" '
/^[0-9a-f]+-[0-9a-f]+ / {
    n++; perms[n] = $2; path[n] = (NF >= 6 ? $6 : ""); size[n] = 0; rss[n] = 0; anon[n] = 0
    next
}
/^Size:/ { size[n] = $2 }
/^Rss:/ { rss[n] = $2 }
/^Anonymous:/ { anon[n] = $2 }
END {
    for (i = 1; i <= n; i++) {
        p = perms[i]; f = path[i]; g = "anon"
        if (f == exe) {
            if (p ~ /^r-x/) g = "text"
            else if (p ~ /^r--/) g = (anon[i] > 0 ? "relro" : "rodata")
            else g = "data"
        } else if (f == "[heap]") g = "heap"
        else if (f == "[stack]") g = "stacks"
        else if (f ~ /^\//) g = "libs"
        else if (f == "" && p ~ /^rw/) {
            if (i < n && path[i+1] == "" && perms[i+1] ~ /^---/ && size[i] + size[i+1] == 65536) g = "arenas"
            else if (i > 1 && path[i-1] == "" && perms[i-1] ~ /^---/ && size[i-1] == 4) g = "stacks"
        }
        tot[g] += rss[i]
    }
    printf "SMAPS %s text=%d rodata=%d relro=%d data+bss=%d libs=%d heap=%d arenas=%d stacks=%d anon=%d\n", label, tot["text"], tot["rodata"], tot["relro"], tot["data"], tot["libs"], tot["heap"], tot["arenas"], tot["stacks"], tot["anon"]
}' "/proc/$pid/smaps"
awk -v label="$label" '/^(VmHWM|VmRSS|RssAnon|RssFile):/ { sub(":", "=", $1); s = s " " $1 $2 }
    END { print "STATUS " label s }' "/proc/$pid/status"

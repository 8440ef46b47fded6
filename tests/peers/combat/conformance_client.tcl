# Combat's half of the conformance client driver (tests/peers/combat_conformance_client.py turns
# the contract's JSON into Combat's Tcl mapping and back).
# Usage: tclsh conformance_client.tcl INTERFACE_TCL IOR OPERATION ARGS_FILE COUNT
# ARGS_FILE (UTF-8) holds the in arguments as one Tcl list. Makes COUNT calls of OPERATION: one
# synchronously, more all sent at once (`$obj -async`) before the first answer is awaited. Prints
# one line a call, in call order: "ok HEX" or "exception HEX", HEX being the UTF-8 of the result
# (or of the exception as Combat raises it: its repository id and members) in hexadecimal, so a
# value with newlines or any octet stays on its line.
# The object is reached by its IOR, whose repository id names the interface INTERFACE_TCL put in
# Combat's local interface repository: Combat then calls at once (by a corbaloc URL it would ask
# the object for _interface first).

package require combat

if {[llength $argv] != 5} {
    puts stderr "usage: conformance_client.tcl INTERFACE_TCL IOR OPERATION ARGS_FILE COUNT"
    exit 2
}
lassign $argv interface_tcl target operation args_file count
source $interface_tcl
set file [open $args_file]
fconfigure $file -encoding utf-8
set call_args [read -nonewline $file]
close $file

proc hex {text} {
    return [binary encode hex [encoding convertto utf-8 $text]]
}

proc report {status value} {
    if {$status == 0} {
        puts "ok [hex $value]"
    } else {
        puts "exception [hex $value]"
    }
}

set lines {}
if {[catch {set obj [corba::string_to_object $target]} err]} {
    for {set i 0} {$i < $count} {incr i} {
        report 1 $err
    }
    exit 0
}
if {$count == 1} {
    report [catch {$obj $operation {*}$call_args} value] $value
} else {
    set requests {}
    for {set i 0} {$i < $count} {incr i} {
        if {[catch {lappend requests [list ok [$obj -async $operation {*}$call_args]]} err]} {
            lappend requests [list failed $err]
        }
    }
    foreach request $requests {
        lassign $request how handle
        if {$how eq "failed"} {
            report 1 $handle
        } else {
            report [catch {corba::request get $handle} value] $value
        }
    }
}
flush stdout
exit 0

# Combat client for tests: calls operations on an object, one call a line of CALLS_FILE, each a
# Tcl list: the operation and its in arguments in Combat's Tcl mapping. Prints one line a call:
# "ok <result as a Tcl list>" or "exception <the exception as Combat raises it>".
# Usage: tclsh echo_client.tcl INTERFACE_TCL IOR_OR_CORBALOC CALLS_FILE [ORB options]
# INTERFACE_TCL "-": no interface known beforehand; Combat asks the object for it (_interface,
# then the InterfaceDef's describe_interface).

package require combat

# Combat 0.8.1 downloads an interface description (DownloadFromIFR in str.tcl) through
# ::Combat::CORBA::ORB::GetObjFromHandle, a procedure it never defines: every download fails
# with "invalid command name". The procedure it means is GetObjFromRef (object reference to
# object); defined here under the name it calls.
if {[info commands ::Combat::CORBA::ORB::GetObjFromHandle] eq ""} {
    proc ::Combat::CORBA::ORB::GetObjFromHandle {ref} {
        return [::Combat::CORBA::ORB::GetObjFromRef $ref]
    }
}

set argv [eval corba::init $argv]
if {[llength $argv] != 3} {
    puts stderr "usage: echo_client.tcl INTERFACE_TCL IOR_OR_CORBALOC CALLS_FILE ORB-options"
    exit 2
}
lassign $argv interface_tcl target calls_file
if {$interface_tcl ne "-"} {
    source $interface_tcl
}

set obj [corba::string_to_object $target]
set calls [open $calls_file]
while {[gets $calls call] >= 0} {
    if {$call eq ""} {
        continue
    }
    if {[catch {set result [$obj {*}$call]} err]} {
        puts "exception $err"
    } else {
        puts "ok $result"
    }
    flush stdout
}
close $calls
exit 0

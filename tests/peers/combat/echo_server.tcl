# Combat echo server for tests: serves the interface that pycdr described for Combat
# (tests/peers/combat_interface.py: its IR form and an echo servant class) on 127.0.0.1.
# Usage: tclsh echo_server.tcl INTERFACE_TCL -ORBHostName 127.0.0.1 -ORBServerPort PORT
# Prints "IOR:...", then "READY" on stdout, and runs until standard input closes.

package require combat

# Combat's TCP server listens on every interface; the tests bind to loopback only. The same
# method, with the ORB's host name (-ORBHostName) as the address to listen on.
itcl::body ::Combat::IIOP::TCPServer::listen {{myport 0}} {
    set sock [socket -server Combat::IIOP::TCPServer::accept \
                  -myaddr $::Combat::CORBA::ORB::hostname $myport]
    set host $::Combat::CORBA::ORB::hostname
    set port [lindex [fconfigure $sock -sockname] 2]
}

set argv [eval corba::init $argv]
if {[llength $argv] != 1} {
    puts stderr "usage: echo_server.tcl INTERFACE_TCL ORB-options"
    exit 2
}
source [lindex $argv 0]

set poa [corba::resolve_initial_references RootPOA]
set servant [EchoServant #auto]
set oid [$poa activate_object $servant]
puts [corba::object_to_string [$poa id_to_reference $oid]]
[$poa the_POAManager] activate
puts READY
flush stdout

# The end of standard input (the test is done, or gone) ends the server.
fconfigure stdin -blocking 0
fileevent stdin readable {
    read stdin
    if {[eof stdin]} {
        exit 0
    }
}
vwait forever

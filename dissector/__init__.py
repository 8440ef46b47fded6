"""The Wireshark Lua plugin (protocol giopx), installed as data of pycdr.dissector.

`pycdr dissector install` copies pycdr_giop.lua, pycdr_names.lua and the type
tables in types/ into Wireshark's plugin folder; nothing here is Python code.
"""

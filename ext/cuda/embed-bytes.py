#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Writes a C header that holds the bytes of a file as a static array:
#   embed-bytes.py INPUT OUTPUT NAME
import sys

data = open(sys.argv[1], 'rb').read()
name = sys.argv[3]
with open(sys.argv[2], 'w') as out:
    out.write('/* generated from %s: do not edit */\n' % sys.argv[1].split('/')[-1])
    # 8-byte alignment: the driver reads a fat binary's header in place
    out.write('static const unsigned long long %s_words[] = {\n' % name)
    padded = data + bytes(-len(data) % 8)
    for i in range(0, len(padded), 64):
        words = [int.from_bytes(padded[j:j + 8], 'little')
                 for j in range(i, min(i + 64, len(padded)), 8)]
        out.write('  ' + ', '.join('0x%016xull' % w for w in words) + ',\n')
    out.write('};\n')
    out.write('#define %s ((const void *) %s_words)\n' % (name, name))
    out.write('#define %s_SIZE %d\n' % (name.upper(), len(data)))

# embed.cmake - write OUT, a C header holding the bytes of IN1 then IN2 as
# the NUL-terminated array kiln_judge_src: kiln's own device code is built
# into the worker, so no file on disk can change what it runs.
file(READ ${IN1} a HEX)
file(READ ${IN2} b HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${a}${b}")
file(WRITE ${OUT} "/* generated from judge_abi.h and kiln_judge.cu by embed.cmake */\nstatic const char kiln_judge_src[] = {${bytes}0x00};\n")

# Writes OUTPUT: a C++ file defining `const std::string& FUNCTION()` (in
# NAMESPACE) that returns INPUT's text, so a file shipped in share/ is also
# inside the binary. Run as `cmake -P` at build time (the file's changes are
# picked up).
file(READ "${INPUT}" content)
set(delimiter "SHOAL_EMBEDDED")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_text.cmake: do not edit.\n"
  "#include <string>\n\nnamespace ${NAMESPACE} {\n\n"
  "const std::string& ${FUNCTION}() {\n"
  "    static const std::string text = R\"${delimiter}(${content})${delimiter}\";\n"
  "    return text;\n}\n\n}  // namespace ${NAMESPACE}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)

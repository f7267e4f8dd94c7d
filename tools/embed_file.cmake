# Writes IN's text into OUT as `extern const char kEmbeddedDefaultScenario[]`.
file(READ ${IN} text)
string(LENGTH "${text}" n)
set(chunks "")
# A raw string literal with a delimiter that YAML never contains.
file(WRITE ${OUT} "// Generated from ${IN}; do not edit.\n"
  "namespace clustersim::tools {\n"
  "extern const char kEmbeddedDefaultScenario[];\n"
  "const char kEmbeddedDefaultScenario[] = R\"csyaml(${text})csyaml\";\n"
  "}  // namespace clustersim::tools\n")

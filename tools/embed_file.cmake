# Writes IN's text into OUT as `extern const char NAME[]` (NAME: kEmbeddedDefaultScenario unless
# given).
if(NOT NAME)
  set(NAME kEmbeddedDefaultScenario)
endif()
file(READ ${IN} text)
# A raw string literal with a delimiter that neither YAML nor JSON text contains.
file(WRITE ${OUT} "// Generated from ${IN}; do not edit.\n"
  "namespace clustersim::tools {\n"
  "extern const char ${NAME}[];\n"
  "const char ${NAME}[] = R\"csyaml(${text})csyaml\";\n"
  "}  // namespace clustersim::tools\n")

(function_declaration name: (identifier) @name) @definition.function
; A method is qualified by its receiver's type.
(method_declaration
  receiver: (parameter_list
    (parameter_declaration type: [(type_identifier) @receiver (pointer_type (type_identifier) @receiver)]))
  name: (field_identifier) @name) @definition.method
(type_spec name: (type_identifier) @name) @definition.class
(source_file (const_declaration (const_spec name: (identifier) @name) @definition.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.constant))
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (selector_expression field: (field_identifier) @name)) @reference.call
(type_identifier) @name @reference.type
(qualified_type name: (type_identifier) @name) @reference.type
(import_spec path: (interpreted_string_literal (interpreted_string_literal_content) @name)) @reference.import
(selector_expression) @name @reference.attribute
(interpreted_string_literal_content) @literal
(raw_string_literal_content) @literal
; An interface's methods are qualified by the interface (the type_spec around them).
(method_elem name: (field_identifier) @name) @definition.method

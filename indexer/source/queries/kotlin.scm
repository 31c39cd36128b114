(class_declaration (type_identifier) @name) @definition.class
(object_declaration (type_identifier) @name) @definition.class
(function_declaration (simple_identifier) @name) @definition.function
(source_file (property_declaration (variable_declaration (simple_identifier) @name)) @definition.constant)
(companion_object (class_body (property_declaration (variable_declaration (simple_identifier) @name)) @definition.constant))
(call_expression (simple_identifier) @name) @reference.call
(call_expression (navigation_expression (navigation_suffix (simple_identifier) @name))) @reference.call
(user_type (type_identifier) @name) @reference.type
(import_header (identifier) @name) @reference.import
(string_content) @literal

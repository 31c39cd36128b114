(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.class
(trait_declaration name: (name) @name) @definition.class
(enum_declaration name: (name) @name) @definition.class
(function_definition name: (name) @name) @definition.function
(method_declaration name: (name) @name) @definition.method
(const_element (name) @name) @definition.constant
(function_call_expression function: (name) @name) @reference.call
(function_call_expression function: (qualified_name (name) @name)) @reference.call
(member_call_expression name: (name) @name) @reference.call
(scoped_call_expression name: (name) @name) @reference.call
(object_creation_expression (name) @name) @reference.call
(base_clause (name) @name) @reference.type
(named_type (name) @name) @reference.type
(namespace_use_clause (qualified_name) @name) @reference.import
(string_content) @literal

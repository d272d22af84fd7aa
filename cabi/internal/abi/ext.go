package abi

// The parts of the headers that are not tables of values: the standard
// ABI's other macros and its callback types, and the ULFM extension that
// MPICH (mpix.h) and Open MPI (mpi-ext.h) programs use.

// Define is a macro with a C expression as its value.
type Define struct{ Name, Value string }

// Versions are the MPI and ABI versions the header declares.
var Versions = []Define{
	{"MPI_VERSION", "5"},
	{"MPI_SUBVERSION", "0"},
	{"MPI_ABI_VERSION", "1"},
	{"MPI_ABI_SUBVERSION", "0"},
}

// Pointers are the ABI's special buffer and array addresses.
var Pointers = []Define{
	{"MPI_BOTTOM", "((void*)0)"},
	{"MPI_IN_PLACE", "((void*)1)"},
	{"MPI_BUFFER_AUTOMATIC", "((void*)2)"},
	{"MPI_ARGV_NULL", "((char**)0)"},
	{"MPI_ARGVS_NULL", "((char***)0)"},
	{"MPI_ERRCODES_IGNORE", "((int*)0)"},
	{"MPI_STATUS_IGNORE", "((MPI_Status*)0)"},
	{"MPI_STATUSES_IGNORE", "((MPI_Status*)0)"},
	{"MPI_UNWEIGHTED", "((int*)10)"},
	{"MPI_WEIGHTS_EMPTY", "((int*)11)"},
}

// Sizes are the lengths of strings the caller provides, and Bsend's overhead.
var Sizes = []Const{
	{"MPI_MAX_DATAREP_STRING", 128},
	{"MPI_MAX_ERROR_STRING", 512},
	{"MPI_MAX_INFO_KEY", 256},
	{"MPI_MAX_INFO_VAL", 1024},
	{"MPI_MAX_LIBRARY_VERSION_STRING", 8192},
	{"MPI_MAX_OBJECT_NAME", 128},
	{"MPI_MAX_PORT_NAME", 1024},
	{"MPI_MAX_PROCESSOR_NAME", 256},
	{"MPI_MAX_STRINGTAG_LEN", 1024},
	{"MPI_MAX_PSET_NAME_LEN", 1024},
	{"MPI_BSEND_OVERHEAD", 512},
}

// Callback is a function type of the ABI (without MPI_), in the notation
// of Funcs.
type Callback struct{ Name, Result, Params string }

// Callbacks are the ABI's function types.
var Callbacks = []Callback{
	{"User_function", "void", "void* invec, void* inoutvec, int* len, Datatype* datatype"},
	{"User_function_c", "void", "void* invec, void* inoutvec, Count* len, Datatype* datatype"},
	{"Grequest_query_function", "int", "void* extra_state, Status* status"},
	{"Grequest_free_function", "int", "void* extra_state"},
	{"Grequest_cancel_function", "int", "void* extra_state, int complete"},
	{"Copy_function", "int", "Comm comm, int keyval, void* extra_state, void* attribute_val_in, void* attribute_val_out, int* flag"},
	{"Delete_function", "int", "Comm comm, int keyval, void* attribute_val, void* extra_state"},
	{"Comm_copy_attr_function", "int", "Comm comm, int comm_keyval, void* extra_state, void* attribute_val_in, void* attribute_val_out, int* flag"},
	{"Comm_delete_attr_function", "int", "Comm comm, int comm_keyval, void* attribute_val, void* extra_state"},
	{"Type_copy_attr_function", "int", "Datatype datatype, int type_keyval, void* extra_state, void* attribute_val_in, void* attribute_val_out, int* flag"},
	{"Type_delete_attr_function", "int", "Datatype datatype, int type_keyval, void* attribute_val, void* extra_state"},
	{"Win_copy_attr_function", "int", "Win win, int win_keyval, void* extra_state, void* attribute_val_in, void* attribute_val_out, int* flag"},
	{"Win_delete_attr_function", "int", "Win win, int win_keyval, void* attribute_val, void* extra_state"},
	{"Datarep_extent_function", "int", "Datatype datatype, Aint* extent, void* extra_state"},
	{"Datarep_conversion_function", "int", "void* userbuf, Datatype datatype, int count, void* filebuf, Offset position, void* extra_state"},
	{"Datarep_conversion_function_c", "int", "void* userbuf, Datatype datatype, Count count, void* filebuf, Offset position, void* extra_state"},
	{"Comm_errhandler_function", "void", "Comm* comm, int* error_code, ..."},
	{"File_errhandler_function", "void", "File* file, int* error_code, ..."},
	{"Win_errhandler_function", "void", "Win* win, int* error_code, ..."},
	{"Session_errhandler_function", "void", "Session* session, int* error_code, ..."},
	{"T_event_cb_function", "void", "T_event_instance event_instance, T_event_registration event_registration, T_cb_safety cb_safety, void* user_data"},
	{"T_event_free_cb_function", "void", "T_event_registration event_registration, T_cb_safety cb_safety, void* user_data"},
	{"T_event_dropped_cb_function", "void", "Count count, T_event_registration event_registration, int source_index, T_cb_safety cb_safety, void* user_data"},
}

// CallbackAliases are the older names of the error handler types.
var CallbackAliases = []Alias{
	{"MPI_Comm_errhandler_fn", "MPI_Comm_errhandler_function"},
	{"MPI_File_errhandler_fn", "MPI_File_errhandler_function"},
	{"MPI_Win_errhandler_fn", "MPI_Win_errhandler_function"},
	{"MPI_Session_errhandler_fn", "MPI_Session_errhandler_function"},
}

// FuncPointer is a predefined callback: a small integer cast to a
// function type.
type FuncPointer struct {
	Name, Type string
	Value      int
}

// FuncPointers are the predefined attribute and conversion callbacks.
var FuncPointers = []FuncPointer{
	{"MPI_NULL_COPY_FN", "Copy_function", 0},
	{"MPI_DUP_FN", "Copy_function", 1},
	{"MPI_NULL_DELETE_FN", "Delete_function", 0},
	{"MPI_COMM_NULL_COPY_FN", "Comm_copy_attr_function", 0},
	{"MPI_COMM_DUP_FN", "Comm_copy_attr_function", 1},
	{"MPI_COMM_NULL_DELETE_FN", "Comm_delete_attr_function", 0},
	{"MPI_TYPE_NULL_COPY_FN", "Type_copy_attr_function", 0},
	{"MPI_TYPE_DUP_FN", "Type_copy_attr_function", 1},
	{"MPI_TYPE_NULL_DELETE_FN", "Type_delete_attr_function", 0},
	{"MPI_WIN_NULL_COPY_FN", "Win_copy_attr_function", 0},
	{"MPI_WIN_DUP_FN", "Win_copy_attr_function", 1},
	{"MPI_WIN_NULL_DELETE_FN", "Win_delete_attr_function", 0},
	{"MPI_CONVERSION_FN_NULL", "Datarep_conversion_function", 0},
	{"MPI_CONVERSION_FN_NULL_C", "Datarep_conversion_function_c", 0},
}

// MPI_T's opaque handle types (the other handle types have predefined
// values in Handles).
var ToolHandleTypes = []string{"T_enum", "T_cvar_handle", "T_pvar_handle", "T_pvar_session", "T_event_registration", "T_event_instance"}

// ULFM: User-Level Failure Mitigation, as MPICH and Open MPI spell it.
// The error classes take MPICH's values; Open MPI's names (MPI_ERR_...)
// are aliases of them.

// ULFMClasses are the error classes of failures.
var ULFMClasses = []Const{
	{"MPIX_ERR_PROC_FAILED", 101},
	{"MPIX_ERR_PROC_FAILED_PENDING", 102},
	{"MPIX_ERR_REVOKED", 103},
}

// ULFMAliases are Open MPI's spellings.
var ULFMAliases = []Alias{
	{"MPI_ERR_PROC_FAILED", "MPIX_ERR_PROC_FAILED"},
	{"MPI_ERR_PROC_FAILED_PENDING", "MPIX_ERR_PROC_FAILED_PENDING"},
	{"MPI_ERR_REVOKED", "MPIX_ERR_REVOKED"},
}

// FTKeyval is the attribute key of MPI_COMM_WORLD that tells whether the
// runtime tolerates failures (Open MPI's MPI_FT, MPIX_FT). It lies
// outside the ABI's range of predefined keys.
const FTKeyval = 599

// ULFMFuncs are the MPIX_ calls (names without MPIX_).
var ULFMFuncs = []Func{
	{"Comm_revoke", "int", "Comm comm"},
	{"Comm_is_revoked", "int", "Comm comm, int* flag"},
	{"Comm_shrink", "int", "Comm comm, Comm* newcomm"},
	{"Comm_ishrink", "int", "Comm comm, Comm* newcomm, Request* request"},
	{"Comm_agree", "int", "Comm comm, int* flag"},
	{"Comm_iagree", "int", "Comm comm, int* flag, Request* request"},
	{"Comm_failure_ack", "int", "Comm comm"},
	{"Comm_failure_get_acked", "int", "Comm comm, Group* failedgrp"},
	{"Comm_get_failed", "int", "Comm comm, Group* failedgrp"},
	{"Comm_ack_failed", "int", "Comm comm, int num_to_ack, int* num_acked"},
	{"Win_revoke", "int", "Win win"},
	{"Win_get_failed", "int", "Win win, Group* failedgrp"},
	{"File_revoke", "int", "File fh"},
}
